import type { LinkingMessages } from '../en.js'

const fr: LinkingMessages = {
  signInMethods: 'Méthodes de connexion',
  loadingMethods: 'Chargement des méthodes de connexion…',
  signInToManage: 'Connectez-vous à l’application pour voir et modifier vos méthodes de connexion.',
  kindEmail: 'E-mail',
  kindPasskey: 'Clé d’accès',
  kindWallet: 'Portefeuille',
  kindOAuth: 'Compte social',
  linkedOn: 'Associé le {date}',
  remove: 'Retirer',
  removeMethod: 'Retirer {label}',
  onlyMethod: 'C’est votre seul moyen de connexion. Ajoutez-en un autre avant de le retirer.',
  addMethod: 'Ajouter une méthode de connexion',
  emailToLink: 'Adresse e-mail à ajouter',
  sendCode: 'Envoyer le code',
  typeCodeInFrame: 'Saisissez dans la fenêtre le code envoyé à {email}.',
  signInWalletToLink: 'Signez le message dans {name}',
  linking: 'Association…',
  methodLinked: '{label} associé. Vous pouvez maintenant vous connecter avec.',
  removing: 'Retrait…',
  methodRemoved: '{label} retiré.',
  secondFactor: 'Second facteur',
  mfaOff: 'Aucun second facteur n’est configuré.',
  mfaOn: 'Une application d’authentification est configurée.',
  setUpTotp: 'Configurer une application d’authentification',
  settingUpTotp: 'Configuration de l’application d’authentification…',
  totpEnrolled: 'Application d’authentification configurée. Gardez vos codes de récupération en lieu sûr.',
  methodsStatus: 'État des méthodes de connexion',
}

export default fr
