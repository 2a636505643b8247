import type { LinkingMessages } from '../en.js'

const es: LinkingMessages = {
  signInMethods: 'Métodos de inicio de sesión',
  loadingMethods: 'Cargando métodos de inicio de sesión…',
  signInToManage: 'Inicia sesión en la app para ver y cambiar cómo inicias sesión.',
  kindEmail: 'Correo',
  kindPasskey: 'Llave de acceso',
  kindWallet: 'Billetera',
  kindOAuth: 'Cuenta social',
  linkedOn: 'Vinculado el {date}',
  remove: 'Quitar',
  removeMethod: 'Quitar {label}',
  onlyMethod: 'Es tu única forma de iniciar sesión. Añade otra antes de quitarla.',
  addMethod: 'Añadir un método de inicio de sesión',
  emailToLink: 'Correo que quieres añadir',
  sendCode: 'Enviar código',
  typeCodeInFrame: 'Escribe en el cuadro de diálogo el código enviado a {email}.',
  signInWalletToLink: 'Firma el mensaje en {name}',
  linking: 'Vinculando…',
  methodLinked: '{label} vinculado. Ya puedes iniciar sesión con él.',
  removing: 'Quitando…',
  methodRemoved: '{label} quitado.',
  secondFactor: 'Segundo factor',
  mfaOff: 'No hay un segundo factor configurado.',
  mfaOn: 'Hay una app de autenticación configurada.',
  setUpTotp: 'Configurar una app de autenticación',
  settingUpTotp: 'Configurando la app de autenticación…',
  totpEnrolled: 'App de autenticación configurada. Guarda tus códigos de recuperación en un lugar seguro.',
  methodsStatus: 'Estado de los métodos de inicio de sesión',
}

export default es
