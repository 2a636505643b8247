import type { LinkingMessages } from '../en.js'

const ar: LinkingMessages = {
  signInMethods: 'طرق تسجيل الدخول',
  loadingMethods: 'جارٍ تحميل طرق تسجيل الدخول…',
  signInToManage: 'سجّل الدخول إلى التطبيق لترى طرق تسجيل الدخول وتغيّرها.',
  kindEmail: 'البريد الإلكتروني',
  kindPasskey: 'مفتاح مرور',
  kindWallet: 'محفظة',
  kindOAuth: 'حساب اجتماعي',
  linkedOn: 'رُبط في {date}',
  remove: 'إزالة',
  removeMethod: 'إزالة {label}',
  onlyMethod: 'هذه طريقتك الوحيدة لتسجيل الدخول. أضف طريقة أخرى قبل إزالتها.',
  addMethod: 'إضافة طريقة تسجيل دخول',
  emailToLink: 'عنوان البريد الإلكتروني المراد إضافته',
  sendCode: 'إرسال الرمز',
  typeCodeInFrame: 'اكتب الرمز المرسل إلى {email} في مربع الحوار.',
  signInWalletToLink: 'وقّع الرسالة في {name}',
  linking: 'جارٍ الربط…',
  methodLinked: 'تم ربط {label}. يمكنك الآن تسجيل الدخول به.',
  removing: 'جارٍ الإزالة…',
  methodRemoved: 'تمت إزالة {label}.',
  secondFactor: 'العامل الثاني',
  mfaOff: 'لم يُعدّ عامل ثانٍ بعد.',
  mfaOn: 'تم إعداد تطبيق مصادقة.',
  setUpTotp: 'إعداد تطبيق مصادقة',
  settingUpTotp: 'جارٍ إعداد تطبيق المصادقة…',
  totpEnrolled: 'تم إعداد تطبيق المصادقة. احتفظ برموز الاسترداد في مكان آمن.',
  methodsStatus: 'حالة طرق تسجيل الدخول',
}

export default ar
